#include "lk_kernels.h"
