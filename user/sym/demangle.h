/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMSCOPE_DEMANGLE_H
#define MMSCOPE_DEMANGLE_H

/*
 * The name a user reads for a symbol: C++ (Itanium ABI) and Rust (legacy and v0) names
 * demangled as perf report shows them by default, without parameter lists, so that the
 * overloads of a function share its frame. NULL when the name is not mangled or cannot be
 * demangled; the caller frees the result.
 */
char *demangle_symbol(const char *name);

#endif
