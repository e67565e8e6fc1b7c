"""``ge.pyatc``: GE's ``atc`` launcher (``python -m ge.pyatc --model=... --framework=5
--output=...``), mapped onto ``ge compile``: the same flags, an ``.om`` of ge-rs's own format."""
