"""`apace cluster ...`: many machines behind one address, on Ray (app.cluster)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
from collections.abc import Callable
from typing import Any

from app.cli.errors import UsageError


def cluster_parser(cluster: argparse.ArgumentParser,
                   serve_parser: Callable[[argparse.ArgumentParser], None]) -> None:
    sub = cluster.add_subparsers(dest="cluster_command", required=True)
    up = sub.add_parser("up", help="start Ray on this machine (`ray start` under the hood)")
    where = up.add_mutually_exclusive_group(required=True)
    where.add_argument("--head", action="store_true", help="this machine is the head")
    where.add_argument("--address", metavar="HEAD:PORT", help="join the head at this address")
    up.add_argument("--no-node", action="store_true",
                    help="hold no conversations here (a head that only runs the ingress)")
    up.add_argument("--cpus", type=int, help="CPUs Ray may schedule here (default: all)")
    up.add_argument("--port", type=int, default=6379, help="the head's Ray port")
    up.set_defaults(run=_cmd_up)
    down = sub.add_parser("down", help="stop Ray on this machine (`ray stop`)")
    down.set_defaults(run=_cmd_down)

    serve = sub.add_parser("serve", help="the ingress, the placement and a node actor on "
                                         "every apace machine (run it on the head)")
    serve_parser(serve)
    serve.add_argument("--address", default="auto",
                       help="the Ray cluster to join (default: the one this machine is in)")
    serve.set_defaults(run=_cmd_serve)

    drain = sub.add_parser("drain", help="place no new conversations on NODE; its own go on")
    drain.add_argument("node", metavar="NODE", help="a name from `apace cluster status`")
    drain.add_argument("--undo", action="store_true", help="place conversations there again")
    drain.add_argument("--address", default="auto")
    drain.set_defaults(run=_cmd_drain)
    status = sub.add_parser("status", help="the nodes, their sessions and load")
    status.add_argument("--address", default="auto")
    status.add_argument("--json", action="store_true")
    status.set_defaults(run=_cmd_status)


def _cmd_up(args: argparse.Namespace) -> int:
    from app.cluster.run import run_up, up_command

    if args.cpus is not None and args.cpus < 1:
        raise UsageError("--cpus must be at least 1")
    return run_up(up_command(head=args.head, address=args.address, node=not args.no_node,
                             cpus=args.cpus, port=args.port))


def _cmd_down(_args: argparse.Namespace) -> int:
    from app.cluster.run import run_up, stop_command

    return run_up(stop_command())


def _cmd_serve(args: argparse.Namespace) -> int:
    from app.cli import exposure, server_options
    from app.cli.engine import settings_from
    from app.cluster.run import connect, engine_from, names_from, serve_cluster
    from app.serve import LOOPBACK_HOSTS, secure
    from app.transports.flags import wyoming_options
    from models.locate import config_path

    options = server_options(args)
    settings = settings_from(args)
    settings.models.resolve()  # a model missing here is missing on the nodes: say so now
    try:
        tls, access, _pairing = secure(exposure(args), config_path().parent)
        wyoming = None if args.wyoming is None else wyoming_options(args, standalone=False)
    except ValueError as error:
        raise UsageError(str(error)) from None
    _connect(connect, args.address)
    try:
        asyncio.run(serve_cluster(functools.partial(engine_from, settings), options,
                                  host=args.host, port=args.port, tls=tls, access=access,
                                  loopback=args.loopback or args.host in LOOPBACK_HOSTS,
                                  wyoming=wyoming, zeroconf=args.zeroconf,
                                  make_names=functools.partial(names_from, settings)))
    except ValueError as error:
        raise UsageError(str(error)) from None
    return 0


def _cmd_drain(args: argparse.Namespace) -> int:
    from app.cluster.run import connect, drain

    _connect(connect, args.address)
    if not _known(lambda: drain(args.node, undo=args.undo)):
        raise UsageError(f"no node {args.node!r}: see `apace cluster status`")
    print(f"apace: {args.node}: {'placing again' if args.undo else 'draining'}")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from app.cluster.run import connect, status

    _connect(connect, args.address)
    nodes = _known(status)
    if args.json:
        print(json.dumps(nodes))
        return 0
    for node in nodes:
        state = "drained" if node["drained"] else "draining" if node["draining"] else "open"
        p50 = node["ttfa_p50_ms"]
        print(f"{node['node']}: {node['sessions']}/{node['max_sessions']} sessions "
              f"(+{node['held']} held), cpu {node['cpu']:.0%}, TTFA p50 "
              f"{'-' if p50 is None else f'{p50:.0f} ms'}, {state}")
    if not nodes:
        print("apace: no node has reported yet", file=sys.stderr)
    return 0


def _connect(connect: Callable[[str], None], address: str) -> None:
    try:
        connect(address)
    except ConnectionError as error:
        raise UsageError(f"cannot join the Ray cluster at {address}: {error} (start it with "
                         "`apace cluster up --head`)") from None


def _known(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except LookupError as error:
        raise UsageError(f"{error}: start `apace cluster serve` on the head first") from None
