"""The version this project reports: the reference release it is compatible with."""

VERSION = "22.0.0"
