"""A serving fleet on Ray: one ``lanes serve`` per node (or per GPU group), supervised by Ray.

``lanes fleet up`` (:func:`up`) places one :class:`~lanes.fleet.member.Member` actor per
planned slot, each owning a real ``lanes serve`` process on its node with the node's devices,
health-checked and restarted by Ray when its server dies; ``lanes fleet status`` and
``lanes fleet down`` (:func:`status`, :func:`down`) inspect and remove it. Clients get the
ready members' URLs from the fleet's registry: :func:`members` (sync) or
:func:`member_source` (async, for ``lanes.client``'s ``members``).

- :mod:`~lanes.fleet.config` — the one typed configuration, :class:`FleetConfig`;
- :mod:`~lanes.fleet.placement` — which members go on which node (pure);
- :mod:`~lanes.fleet.member` — the member actor and its ``lanes serve`` process;
- :mod:`~lanes.fleet.registry` — the named actor listing the members;
- :mod:`~lanes.fleet.control` — up, status, down, members over a Ray cluster.

Ray is an optional extra (``pip install 'lanes[ray]'``), imported only when a function here
joins a cluster. User guide: docs/fleet.md.
"""

from lanes.fleet.config import FleetConfig
from lanes.fleet.control import MemberStatus, down, member_source, members, status, up

__all__ = ["FleetConfig", "MemberStatus", "down", "member_source", "members", "status", "up"]
