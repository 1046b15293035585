"""The clean service: no planted fault.

One aiohttp event loop; each request runs the zoo's model (about 0.3 ms of CPU) on the loop and
answers a small KServe v2 reply. Nothing blocks the loop, no lock is shared, no thread is
started, nothing is pinned, and the JSON is a few hundred bytes. The lab must report no finding
here under Poisson load: this is the control of the zoo, and the service the wave-client case
drives with synchronised waves instead.
"""

from __future__ import annotations

import common
from aiohttp import web


async def handle(request: web.Request) -> web.Response:
    return common.json_response(common.infer(await request.read()))


if __name__ == "__main__":
    common.serve(common.app(handle), common.port_from_args(__doc__))
