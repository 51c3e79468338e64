#include "alloc_counter.h"
uint64_t alloc_counter_mallocs(void) { return 0; }
void alloc_counter_reset(void) {}
