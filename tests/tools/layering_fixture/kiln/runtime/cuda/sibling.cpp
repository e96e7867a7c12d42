// Fixture: runtime/cuda may not include runtime/cpu.
#include "kiln/runtime/cpu/cpu_backend.h"
