#ifndef SCANGATE_TOML_H
#define SCANGATE_TOML_H
#include <stddef.h>
#include <stdint.h>
/// placeholder; filled in with the configuration loader
int sg_toml_version(void);
#endif
