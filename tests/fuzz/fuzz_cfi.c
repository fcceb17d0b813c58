/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libFuzzer target for the unwind-table compiler (user/cfi/cfi*.c), which reads the ELF files of
 * traced processes: each input is compiled as an ELF image, and any table that comes out is
 * checked (rows sorted, rule indices valid, each row found at its start) and searched at
 * addresses taken from the input.
 *
 * clang -g -O1 -fsanitize=fuzzer,address,undefined -I. -Iuser tests/fuzz/fuzz_cfi.c user/cfi/cfi.c
 *\ user/cfi/cfi_parse.c user/cfi/cfi_program.c -lelf -o build/fuzz_cfi build/fuzz_cfi
 *tests/fuzz/corpus/cfi
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cfi/cfi.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_table *t = NULL;
	uint64_t prev = 0;

	if (cfi_table_from_mem(data, size, &t))
		return 0;
	for (uint32_t i = 0; i < t->nrows; i++) {
		uint64_t a = cfi_table_row_addr(t, i);

		if ((i && a <= prev) || t->rows[i].rule >= t->nrules || cfi_table_find(t, a) != i)
			abort();
		prev = a;
	}
	for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
		uint64_t a;
		int64_t k;

		memcpy(&a, data + i, 8);
		k = cfi_table_find(t, a);
		if (k >= (int64_t)t->nrows || (k >= 0 && cfi_table_row_addr(t, (uint32_t)k) > a))
			abort();
	}
	cfi_table_free(t);
	return 0;
}
