/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of user/sym/demangle.c. The oracle for C++ is binutils' c++filt -p (no parameter lists,
 * as mmscope shows names) over every mangled name libstdc++ exports; c++filt always expands
 * the standard library's abbreviations (std::string, std::istream, ...), which perf report and
 * mmscope keep, so those are expanded here before comparing. Rust names are checked against
 * the demangled forms their mangling schemes define.
 */
#include "sym/demangle.h"
#include "test.h"

#include <stdlib.h>

static void expect_demangled(const char *mangled, const char *want)
{
	char *got = demangle_symbol(mangled);

	if (want)
		EXPECT_STREQ(got, want);
	else if (got) {
		fprintf(stderr, "demangle_symbol(\"%s\") == \"%s\", expected NULL\n", mangled, got);
		t_case_failures++;
	}
	free(got);
}

static void known_names(void)
{
	expect_demangled("_ZNSt6vectorIiSaIiEE9push_backERKi",
			 "std::vector<int, std::allocator<int> >::push_back");
	expect_demangled("_ZN2mm7TouchesIlE5pagesEPcm", "mm::Touches<long>::pages");
	expect_demangled("_ZZ4mainE1x", "main::x");
	/* Legacy Rust: Itanium-shaped, the trailing hash dropped. */
	expect_demangled("_ZN4core3ptr13drop_in_place17h1234567890abcdefE",
			 "core::ptr::drop_in_place");
	/* Rust v0: crate root with its disambiguator, then a value namespace path. */
	expect_demangled("_RNvCs1234_7mycrate4main", "mycrate::main");
	expect_demangled("_RNvNtCs1234_7mycrate5inner5touch", "mycrate::inner::touch");
	/* Not mangled, or not validly: shown as they are. */
	expect_demangled("main", NULL);
	expect_demangled("_start", NULL);
	expect_demangled("_Zfoo", NULL);
	expect_demangled("_R", NULL);
	expect_demangled("_", NULL);
	expect_demangled("", NULL);
	expect_demangled(NULL, NULL);
}

/* c++filt's expansions of the abbreviations libiberty keeps without DMGL_VERBOSE. */
static const char *const abbrev[][2] = {
	{"std::string", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >"},
	{"std::istream", "std::basic_istream<char, std::char_traits<char> >"},
	{"std::ostream", "std::basic_ostream<char, std::char_traits<char> >"},
	{"std::iostream", "std::basic_iostream<char, std::char_traits<char> >"},
};

/* s with every abbreviation expanded as c++filt prints it (a static buffer). */
static const char *expanded(const char *s)
{
	static char out[8192];
	size_t o = 0;

	while (*s && o < sizeof(out) - 1) {
		size_t i, n = 0;

		for (i = 0; i < sizeof(abbrev) / sizeof(abbrev[0]); i++) {
			n = strlen(abbrev[i][0]);
			/* a whole name: std::string, not std::string_view */
			if (!strncmp(s, abbrev[i][0], n) &&
			    !(s[n] == '_' || (s[n] >= 'a' && s[n] <= 'z')))
				break;
		}
		if (i < sizeof(abbrev) / sizeof(abbrev[0])) {
			s += n;
			/* every expansion ends in '>': before another, the demangler spaces them */
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", abbrev[i][1],
					      *s == '>' ? " " : "");
		} else
			out[o++] = *s++;
	}
	out[o < sizeof(out) ? o : sizeof(out) - 1] = '\0';
	return out;
}

/* Every C++ name libstdc++ exports, once each (libstdc++ comes with gcc). */
#define LIBSTDCXX_NAMES                                                                            \
	"nm -D --defined-only /usr/lib/x86_64-linux-gnu/libstdc++.so.6 | "                         \
	"awk '$3 ~ /^_Z/ { sub(/@.*/, \"\", $3); print $3 }' | sort -u"

static void libstdcxx_vs_cxxfilt(void)
{
	/* The same list twice, as it is and through c++filt -p: compared line for line. */
	FILE *names = popen(LIBSTDCXX_NAMES, "r"),
	     *filt = popen(LIBSTDCXX_NAMES " | c++filt -p", "r");
	char mangled[4096], ref[8192];
	int n = 0, differ = 0;

	EXPECT(names && filt);
	if (!names || !filt)
		return;
	while (fgets(mangled, sizeof(mangled), names) && fgets(ref, sizeof(ref), filt)) {
		char *got;

		mangled[strcspn(mangled, "\n")] = '\0';
		ref[strcspn(ref, "\n")] = '\0';
		got = demangle_symbol(mangled);
		if (strcmp(got ? expanded(got) : mangled, ref)) {
			if (differ++ < 5)
				fprintf(stderr, "%s: ours '%s', c++filt -p '%s'\n", mangled,
					got ? got : "(null)", ref);
		}
		free(got);
		n++;
	}
	pclose(names);
	pclose(filt);
	printf("# libstdc++: %d mangled names, %d differ from c++filt -p\n", n, differ);
	EXPECT(n > 1000);
	EXPECT_EQ_U64(differ, 0);
}

TEST_MAIN(T(known_names), T(libstdcxx_vs_cxxfilt))
