"""The ``rampart`` command line (also ``python -m rampart``).

Subcommands, one module each, all working from saved runs or fresh pytest processes:

* ``validate`` (``_validate``) -- check JSON reports and JSONL trace files against the
  ``rampart.trace.v2`` JSON Schema and the codec's decoder rules;
* ``report`` (``_report``) -- re-render the terminal summary and the HTML report from
  saved runs, several merged into one view;
* ``diff`` (``_diff``) -- what changed between two runs, with a two-sample test so noise
  is not called a regression (exit status 1 on a significant one);
* ``rescore`` (``_rescore``) -- re-judge saved trace records with another evaluator,
  without calling the agent;
* ``sweep`` (``_sweep``) -- run the same tests once per concurrency setting and compare.

Reading saved runs is ``_inputs``; tables are ``_table``. ``main`` builds the parser
from every subcommand's ``register`` function; the heavy imports (jsonschema, the
codec's converter, the engine, matplotlib) happen inside the subcommand that needs
them, so ``rampart --help`` is fast and ``import rampart`` never loads this package.
``docs/cli.md`` is the user's page.
"""

from rampart.cli._main import main

__all__ = ["main"]
