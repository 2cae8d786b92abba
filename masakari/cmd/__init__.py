"""Console scripts: masakari-api, masakari-engine, masakari-manage, masakari-status."""
