extern "C" int sg_toml_version(void) { return 3; }
