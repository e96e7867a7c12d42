// Fixture: a public header with a third-party include.
#pragma once
#include <hdf5.h>
