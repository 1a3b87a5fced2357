#ifndef LK_KERNELS_H
#define LK_KERNELS_H
#endif
