"""neocog.aio — AsyncClient, Client for asyncio.

A thin layer: the Client's I/O thread does the work, and each call's
concurrent.futures.Future is awaited through asyncio.wrap_future, so
coroutines of one event loop (or several) may share an AsyncClient, and the
reconnect, retry and deadline rules are Client's.
"""

import asyncio

from .client import Client

__all__ = ["AsyncClient"]


class AsyncClient:
    """Client's arguments; every call a coroutine with Client's options."""

    def __init__(self, address=None, **options):
        self._client = Client(address, **options)
        self.address = self._client.address

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self):
        await asyncio.get_running_loop().run_in_executor(None, self._client.close)

    async def recognize(self, image, **options):
        return await asyncio.wrap_future(self._client.submit(image, **options))

    async def recognize_many(self, images, *, return_exceptions=False, **options):
        return await asyncio.gather(*(self.recognize(i, **options) for i in images),
                                    return_exceptions=return_exceptions)

    async def status(self, *, deadline=None):
        return await asyncio.wrap_future(self._client.submit_status(deadline=deadline))

    async def health(self, *, deadline=None):
        return await asyncio.wrap_future(self._client.submit_health(deadline=deadline))
