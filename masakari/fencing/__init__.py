"""Host fencing (power fencing, STONITH): proving a failed compute host is off before any of
its instances is started elsewhere.

Not to be confused with *lease fencing* (:mod:`masakari.engine.lease`, docs/engine.md
§ Fencing), which stops an engine whose claim on a notification ran out. Here the thing
fenced is a compute host, through its BMC (IPMI, Redfish), a ClusterLabs fence agent, the
proof of a kernel crash (fence_kdump's message) or its shared-disk lease, or cut off its Ceph
storage.

- :mod:`masakari.fencing.base`: the contract every driver keeps, and what the fencing file
  says about one driver (:class:`~masakari.fencing.base.DriverSpec`).
- :mod:`masakari.fencing.config`: the fencing file, loaded and checked
  (:class:`~masakari.fencing.config.FencingFile`).
- :mod:`masakari.fencing.drivers`: ``power_driver(spec)`` and the doctor's ``check(spec)``.
- :mod:`masakari.fencing.ipmi`: the IPMI driver (pyghmi, in a long-lived child process that
  keeps a session per BMC: :mod:`masakari.fencing._worker`).
- :mod:`masakari.fencing.redfish`: the Redfish driver (sushy).
- :mod:`masakari.fencing.agent`: any ClusterLabs fence agent, through its stdin.
- :mod:`masakari.fencing.kdump`: fence_kdump's messages: the listener, the parsing, a crash
  proof in memory.
- :mod:`masakari.fencing.lease`: the shared-disk lease: its slot format, and the judgement
  of a host's slot (renewing: a veto; expired: a proof). Its host side is
  :mod:`masakari.cmd.lease_agent`.
- :mod:`masakari.fencing.ceph`: storage fencing: a host's client addresses in the Ceph OSD
  map's blocklist (the ``ceph`` command).
"""
