"""Command-line flags of the transports: `apace wyoming`, and `--wyoming PORT` on
`apace serve` (app.cli adds them with these functions)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util

from app.transports.wyoming.server import WyomingOptions

WYOMING_PORT = 10300


def wyoming_flags(parser: argparse.ArgumentParser, *, standalone: bool) -> None:
    """The Wyoming flags: `standalone` for `apace wyoming`, else beside `apace serve`."""
    group = parser.add_argument_group(
        "Wyoming (Home Assistant; the protocol has no authentication: loopback or a trusted "
        "LAN only)")
    if standalone:
        group.add_argument("--host", default="127.0.0.1",
                           help="address to bind (0.0.0.0 for Home Assistant on another box)")
        group.add_argument("--port", type=int, default=WYOMING_PORT,
                           help="TCP port (default %(default)s)")
    else:
        group.add_argument("--wyoming", type=int, metavar="PORT",
                           help=f"also serve Wyoming on this TCP port (e.g. {WYOMING_PORT}),"
                                " sharing the models")
        group.add_argument("--wyoming-host", metavar="ADDR",
                           help="address the Wyoming port binds (default: --host)")
    group.add_argument("--wyoming-allow", action="append", metavar="NET",
                       help="only clients in this network may connect, e.g. 192.168.1.0/24 "
                            "(repeatable; default: any that can reach the port)")
    group.add_argument("--zeroconf", nargs="?", const="apace", metavar="NAME",
                       help="announce the Wyoming server on the LAN (mDNS _wyoming._tcp) as "
                            "NAME (default apace); needs `pip install zeroconf`")
    group.add_argument("--max-conversations", type=int, default=WyomingOptions().max_conversations,
                       help="conversations (llama contexts) kept for Home Assistant's "
                            "conversation agent (default %(default)s)")


def wyoming_options(args: argparse.Namespace, *, standalone: bool) -> WyomingOptions:
    """The options the flags ask for; ValueError names a bad one."""
    port = args.port if standalone else args.wyoming
    host = args.host if standalone else (args.wyoming_host or args.host)
    if not 0 < port < 65536:
        raise ValueError(f"the Wyoming port must be 1-65535, got {port}")
    if args.max_conversations < 1:
        raise ValueError("--max-conversations must be at least 1")
    if args.zeroconf is not None and importlib.util.find_spec("zeroconf") is None:
        raise ValueError("--zeroconf needs the zeroconf package: pip install zeroconf")
    return WyomingOptions(host=host, port=port, allow=tuple(args.wyoming_allow or ()),
                          max_conversations=args.max_conversations)


def run_wyoming_command(args: argparse.Namespace, settings: object) -> int:
    """`apace wyoming`."""
    from app.runtime import Settings
    from app.transports.wyoming.run import run_wyoming

    assert isinstance(settings, Settings)
    options = wyoming_options(args, standalone=True)
    asyncio.run(run_wyoming(settings, options, zeroconf=args.zeroconf))
    return 0
