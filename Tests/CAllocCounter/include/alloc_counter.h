#include <stdint.h>
void alloc_counter_reset(void);
uint64_t alloc_counter_mallocs(void);
