"""Entry-point module of the pytest plugin. Loading it must stay cheap."""
