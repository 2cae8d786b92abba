"""Doubles of the systems masakari talks to: Keystone, Nova and Placement (the simulator), BMCs
(IPMI, Redfish) and fence_kdump senders; our own helpers are in tests/support."""
