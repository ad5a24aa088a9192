"""Several daemons on one store: the store's side of sharing it.

- ``ttl``: how long a named lease lives unrenewed (no Redis import: start-up reads it);
- ``holders``: a name for this daemon process as a lease holder, and whether
  another holder's process on this host has ended;
- ``named_lease``: a lease on any name (``NamedLease``, ``hold_while``);
- ``prefix_lease``: one daemon per key prefix when there is no fleet;
- ``sessions`` and ``session_scripts``: ``[store] fleet = true``, each session owned
  by one daemon (the events stream, leases and fencing tokens);
- ``port``: ``Coordination`` — named leases, change notices and rosters — which the
  store hands the components that split work between daemons (shell tasks,
  subscriptions), and ``coordination`` and ``notices``, its Redis side.

The daemon's part of a fleet (the tasks that drive these) is ``wakeful.app.fleet``.
"""
