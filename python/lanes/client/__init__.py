"""``lanes.client``: a Python client for one ``lanes serve`` or a fleet of them (KServe v2).

:class:`Client` (threads) and :class:`AsyncClient` (asyncio) batch the calls of many callers
into full batches (:mod:`~lanes.client.batcher`), send each batch to the member with the least
outstanding estimated work (:mod:`~lanes.client.balancer`), drop members that fail and bring
them back by a half-open readiness probe (:mod:`~lanes.client.members`), retry only what never
reached a device and carry each call's deadline to the server (:mod:`~lanes.client.errors`),
over a transport seam (:mod:`~lanes.client.transport`: REST today). Configured by one
:class:`ClientConfig`. User guide: docs/client.md.

```python
from lanes.client import Client

with Client(members=["http://10.0.0.7:8000", "http://10.0.0.8:8000"]) as client:
    out = client.infer("char_cnn", {"image": images}, timeout_s=0.1)
```
"""

from lanes.client.client import AsyncClient, Client
from lanes.client.config import ClientConfig, MemberSource
from lanes.client.errors import ClientError
from lanes.client.members import MemberState

__all__ = ["AsyncClient", "Client", "ClientConfig", "ClientError", "MemberSource", "MemberState"]
