"""Recovery flows: dispatch by notification type, host/instance/process flows, evacuation."""
