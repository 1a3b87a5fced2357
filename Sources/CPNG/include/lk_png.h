#ifndef LK_PNG_H
#define LK_PNG_H
#endif
