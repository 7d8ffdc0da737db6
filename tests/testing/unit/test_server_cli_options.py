"""The test server's command line (``rampart.testing.server._cli``): the public
``cli_arguments`` and the private parser agree on every option."""

from __future__ import annotations

from rampart.testing.server import ServerOptions, cli_arguments
from rampart.testing.server._cli import _options, parser


def test_arguments_round_trip() -> None:
    """cli_arguments(options) parses back to the same options."""
    options = ServerOptions(
        rate=12.5,
        burst=4,
        latency=0.01,
        error_rate=0.1,
        hang_rate=0.05,
        broken_rate=0.2,
        broken_bodies=("content-filter", "empty-message"),
        error_statuses=(502, 504),
        seed=7,
        compliance=0.25,
        secret="s3cret",
        model="toy",
        retry_after_ms=False,
        rate_limit_headers="ietf",
        max_conversations=50,
        max_body_bytes=1000,
        echo_credentials=True,
    )
    assert _options(parser().parse_args(cli_arguments(options))) == options
    assert _options(parser().parse_args(cli_arguments(ServerOptions()))) == ServerOptions()
