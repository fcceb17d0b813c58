/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fuzzers' check of their output: a failed CHECK() aborts, so that libFuzzer saves the
 * input as a crash, after naming the file, line and condition.
 */
#ifndef MMSCOPE_TESTS_FUZZ_CHECK_H
#define MMSCOPE_TESTS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE_NAME__, __LINE__,      \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
