"""Our own test helpers, shared by every test directory (conftest files hold fixtures only, and
no test module imports another; other systems' doubles are in tests/fakes)."""
