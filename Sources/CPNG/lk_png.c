#include "lk_png.h"
