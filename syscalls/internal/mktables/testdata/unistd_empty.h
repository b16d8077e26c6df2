#ifndef _ASM_UNISTD_EMPTY_H
#define _ASM_UNISTD_EMPTY_H
#endif
