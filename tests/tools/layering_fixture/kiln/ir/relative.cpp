// Fixture: a relative include.
#include "../core/shape.h"
