/* SPDX-License-Identifier: GPL-2.0 */
/* Fixed-width types for headers compiled both as BPF (after vmlinux.h) and
 * on the host (the math unit tests). */
#ifndef RTTFAIR_TYPES_H
#define RTTFAIR_TYPES_H
#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <stdbool.h>
#endif
#ifndef RF_INLINE
#define RF_INLINE static inline __attribute__((always_inline))
#endif
#endif
