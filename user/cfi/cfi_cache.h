/* SPDX-License-Identifier: GPL-2.0 */
/* Compiled unwind tables on disk, by build ID (user/cfi/cfi_cache.c). */
#ifndef MMSCOPE_CFI_CACHE_H
#define MMSCOPE_CFI_CACHE_H

#include <stdint.h>

#include "cfi/cfi.h"

/* Where tables are kept unless --unwind-cache says otherwise. */
#define CFI_CACHE_DIR "/var/cache/mmscope/unwind"

/* The table of the file with build ID id for machine: 0 and *out, or -errno (-ENOENT: not
 * cached, -EINVAL: a file that is not a whole, consistent table). */
int cfi_cache_load(const char *dir, const unsigned char *id, uint32_t idlen, uint16_t machine,
		   struct cfi_table **out);
/* Keep t (it has a build ID) in dir, made if missing: 0 or -errno. */
int cfi_cache_store(const char *dir, const struct cfi_table *t);

#endif
