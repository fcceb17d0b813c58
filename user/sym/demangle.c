// SPDX-License-Identifier: GPL-2.0
/*
 * Demangling by libiberty, the GNU toolchain's own demangler (c++filt, gdb, perf use it):
 * Itanium C++, legacy Rust (Itanium-shaped, its hash suffix dropped) and Rust v0.
 */
#include <stdlib.h>
#include <libiberty/demangle.h>

#include "sym/demangle.h"

char *demangle_symbol(const char *name)
{
	/* Only "_Z" (Itanium, and legacy Rust inside it) and "_R" (Rust v0) are tried: libiberty
	 * would read other styles (Java, GNAT, D) into plain C names that merely look like them. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_AUTO | DMGL_ANSI);
}
