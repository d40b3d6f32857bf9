// Fixture: mapping/ including the I/O layer must fail the layer check.
#pragma once

#include "io/h5.hpp"
