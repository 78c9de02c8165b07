"""A TCP listener that owns its connections: each runs in a task the listener keeps and
cancels on `close` (asyncio's own callback task ends at once, so cancelling never reaches
it). The Wyoming server and the cluster's Wyoming port are both one."""

from __future__ import annotations

import asyncio


class TcpListener:
    """Listens on `host`:`port` (0: any free port, then `self.port`); a subclass answers
    each connection in `_connection`."""

    def __init__(self, host: str, port: int, *, what: str, task_name: str) -> None:
        self.host, self.port = host, port
        self._what, self._task_name = what, task_name
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen (raises ValueError naming the address when that fails)."""
        try:
            self._server = await asyncio.start_server(self._accept, self.host, self.port)
        except OSError as error:
            raise ValueError(f"cannot listen on {self.host}:{self.port} for {self._what}: "
                             f"{error.strerror}") from None
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening and end every connection. Cancel-safe."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections))

    @property
    def connections(self) -> int:
        return len(self._connections)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._connection(reader, writer), name=self._task_name)
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError
