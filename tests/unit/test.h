/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny unit-test harness: each test binary lists its cases in TEST_MAIN(), prints one
 * "PASS name" / "FAIL name" line per case, and exits non-zero when any case failed. The
 * suite runner (tests/run.sh) counts those lines across all binaries.
 */
#ifndef MMSCOPE_TEST_H
#define MMSCOPE_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct t_case {
	const char *name;
	void (*fn)(void);
};

static int t_case_failures;

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: EXPECT(%s) failed\n", __FILE__, __LINE__, #cond);  \
			t_case_failures++;                                                         \
		}                                                                                  \
	} while (0)

#define EXPECT_EQ_U64(a, b)                                                                        \
	do {                                                                                       \
		uint64_t t_a_ = (uint64_t)(a), t_b_ = (uint64_t)(b);                               \
		if (t_a_ != t_b_) {                                                                \
			fprintf(stderr, "%s:%d: %s == %" PRIu64 ", expected %s == %" PRIu64 "\n",  \
				__FILE__, __LINE__, #a, t_a_, #b, t_b_);                           \
			t_case_failures++;                                                         \
		}                                                                                  \
	} while (0)

#define EXPECT_STREQ(a, b)                                                                         \
	do {                                                                                       \
		const char *t_a_ = (a), *t_b_ = (b);                                               \
		if (!t_a_ || !t_b_ || strcmp(t_a_, t_b_) != 0) {                                   \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__,        \
				__LINE__, #a, t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)");     \
			t_case_failures++;                                                         \
		}                                                                                  \
	} while (0)

#define T(fn)                                                                                      \
	{                                                                                          \
		#fn, fn                                                                            \
	}

#define TEST_MAIN(...)                                                                             \
	int main(void)                                                                             \
	{                                                                                          \
		static const struct t_case cases[] = {__VA_ARGS__};                                \
		int failed = 0;                                                                    \
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {                    \
			t_case_failures = 0;                                                       \
			cases[i].fn();                                                             \
			printf("%s %s\n", t_case_failures ? "FAIL" : "PASS", cases[i].name);       \
			failed += t_case_failures != 0;                                            \
		}                                                                                  \
		return failed ? 1 : 0;                                                             \
	}

#endif
