"""The HTTP API: app assembly, routing, microversions, validation, faults and handlers."""
