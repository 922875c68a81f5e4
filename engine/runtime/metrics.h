#pragma once
// GenerationMetrics is a public type (include/tessera/metrics.h).
#include "tessera/metrics.h"
