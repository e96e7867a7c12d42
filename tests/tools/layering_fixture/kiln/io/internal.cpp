// Fixture: io/ may not include runtime/, and runtime's _impl.h is internal to it.
#include "kiln/runtime/cpu/team_impl.h"
