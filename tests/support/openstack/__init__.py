"""A real OpenStack control plane on loopback for the drills (tests/openstack): upstream
Keystone, Placement, Glance and Nova with Nova's fake virt driver. docs/real-openstack.md."""
