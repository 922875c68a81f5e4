#pragma once
// DeviceInfo is a public type (include/tessera/device_info.h): placement,
// tiling and bench read the same struct a program gets from Model::device().
#include "tessera/device_info.h"
