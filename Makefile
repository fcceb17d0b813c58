# SPDX-License-Identifier: GPL-2.0
# mmscope: CO-RE BPF objects + one userspace binary. Everything built goes under build/.
#
#   make            build/mmscope and the workloads
#   make run        install what is missing, build, run the main job (mmscope stat on the exec loop)
#   make test       install what is missing, build, run the whole test suite
#   make static     build/mmscope-static (statically linked: for other hosts and test VMs)
#   make bench-smoke  fault-loop time with and without mmscope stat
#   make fuzz       long libFuzzer runs (make test runs short ones)
#   make install    PREFIX=/usr/local DESTDIR=: $(PREFIX)/sbin/mmscope and the man pages
#   V=1             show the commands

HOST_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')
ARCH ?= $(HOST_ARCH)
ifeq ($(wildcard vmlinux-headers/$(ARCH)/vmlinux.h),)
$(error no vmlinux-headers/$(ARCH)/vmlinux.h: ARCH must be one of $(notdir $(wildcard vmlinux-headers/*)))
endif

ifeq ($(ARCH),$(HOST_ARCH))
OUT := build
else
OUT := build/$(ARCH)
endif

CROSS_COMPILE ?=
CC := $(CROSS_COMPILE)gcc
CLANG ?= clang
BPFTOOL ?= bpftool
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0)

CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror
# Frame pointers everywhere, leaf functions included: user stacks are unwound by the kernel
# through frame pointers, and a leaf without a frame hides its caller.
ifneq ($(filter x86 arm64,$(ARCH)),)
FP_FLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
else
FP_FLAGS := -fno-omit-frame-pointer
endif
# SYSROOT: a directory of unpacked -dev packages of the target architecture (tools/vm/sysroot.sh,
# for the VM tests' cross builds): its headers come before the system's, its libraries are linked.
SYSROOT ?=
SYSROOT_FLAGS := $(if $(SYSROOT),-isystem $(SYSROOT)/usr/include $(patsubst %,-L%,$(wildcard $(SYSROOT)/usr/lib/*-linux-gnu*)))
USER_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 $(FP_FLAGS) -D_GNU_SOURCE \
	-DMMSCOPE_VERSION='"$(VERSION)"' -I$(OUT) -I. -Iuser -Ibpf $(SYSROOT_FLAGS)
LIBS := -lbpf -lelf -ldw -lz -llzma -liberty -lmicrohttpd -lpthread
STATIC_LIBS := -lbpf -ldw -lelf -lz -lzstd -llzma -lbz2 -liberty -lpthread

# clang's own system include dirs, so <asm/types.h> & co. resolve for -target bpf everywhere.
CLANG_BPF_SYS_INCLUDES := $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux-headers/$(ARCH) -Ibpf \
	$(CLANG_BPF_SYS_INCLUDES) -Wall -Werror -Wno-unused-function

BPF_SRCS := $(wildcard bpf/*.bpf.c)
# btfcheck.bpf.c is an object of its own, loaded before the main one (user/core/btfcheck.c).
BPF_MAIN_SRCS := $(filter-out bpf/btfcheck.bpf.c,$(BPF_SRCS))
# state.bpf.o defines the shared maps and must come first: libbpf 1.1's linker resolves the
# other objects' extern maps only against definitions it has already seen.
BPF_OBJS := $(OUT)/bpf/state.bpf.o $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(filter-out bpf/state.bpf.c,$(BPF_MAIN_SRCS)))
BPF_HDRS := $(wildcard bpf/*.h)
# user/cmd: a file per subcommand (options, wiring); user/core: the run (target, hooks, load,
# drain, the BPF maps); user/sym and user/cfi: symbols and unwind tables from ELF files;
# user/out: the writers; user/lib: small helpers. Includes name the folder: "core/session.h".
USER_SRCS := $(wildcard user/*/*.c)
USER_HDRS := $(wildcard user/*/*.h)
USER_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS))
SKELS := $(OUT)/mmscope.skel.h $(OUT)/mmscope_nocb.skel.h $(OUT)/btfcheck.skel.h $(OUT)/syscall_names.h \
	$(OUT)/btf_builtin.h
WORKLOADS := $(patsubst tools/workloads/%.c,$(OUT)/workloads/%,$(wildcard tools/workloads/*.c)) \
	$(OUT)/workloads/deep_stack_dbgframe

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all deps run test test-loaded unit live static workloads workloads32 bench-smoke bench static-checks fuzz fuzz-build \
	clean format check-format print-format-files asan bench-tools

all: $(OUT)/mmscope workloads

deps:
	$(Q)tools/deps.sh

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) vmlinux-headers/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp && llvm-strip -g $@.tmp -o $@ && rm -f $@.tmp

$(OUT)/mmscope.bpf.o: $(BPF_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUT)/mmscope.skel.h: $(OUT)/mmscope.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name mmscope > $@

# The check that a BTF given or carried describes the running kernel (user/core/btfcheck.c).
$(OUT)/btfcheck.skel.h: $(OUT)/bpf/btfcheck.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name btfcheck > $@

# The same programs without BPF callbacks (-DMMSCOPE_NO_CALLBACKS, bpf/compat.bpf.h), for
# kernels whose verifier knows none (before 5.13): only its ELF bytes are used, loaded through
# the mmscope skeleton (user/core/session.c), so its maps, programs and variables must be the same,
# at the same places: the two skeletons must agree up to their ELF bytes.
BPF_NOCB_OBJS := $(patsubst $(OUT)/bpf/%,$(OUT)/bpf-nocb/%,$(BPF_OBJS))
$(OUT)/bpf-nocb/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) vmlinux-headers/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DMMSCOPE_NO_CALLBACKS -c $< -o $@.tmp && llvm-strip -g $@.tmp -o $@ && rm -f $@.tmp

$(OUT)/mmscope-nocb.bpf.o: $(BPF_NOCB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUT)/mmscope_nocb.skel.h: $(OUT)/mmscope-nocb.bpf.o $(OUT)/mmscope.skel.h
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name mmscope > $@.layout
	$(Q)sed -n '1,/^static inline const void \*mmscope__elf_bytes(size_t \*sz)$$/p' $@.layout >$@.a
	$(Q)sed -n '1,/^static inline const void \*mmscope__elf_bytes(size_t \*sz)$$/p' $(OUT)/mmscope.skel.h >$@.b
	$(Q)cmp -s $@.a $@.b || { echo "$@: the objects with and without callbacks differ in layout" >&2; diff $@.b $@.a | head -20 >&2; exit 1; }
	$(Q)rm -f $@.layout $@.a $@.b
	$(Q)$(BPFTOOL) gen skeleton $< name mmscope_nocb > $@

# System call names of the target architecture, from its own <asm/unistd.h>: the list of
# __NR_ names, resolved by the compiler (arm64's generic table aliases some of them).
$(OUT)/syscall_names.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)echo '#include <asm/unistd.h>' | $(CC) -E -dM - | \
		sed -n 's/^#define __NR_\([a-z0-9_]*\) .*/\1/p' | sort -u | \
		awk '{ printf "#ifdef __NR_%s\n\t{__NR_%s, \"%s\"},\n#endif\n", $$1, $$1, $$1 }' > $@

# Detached BTF of the kernels without their own, built in (user/core/btf.c).
$(OUT)/btf_builtin.h: tools/gen-btf-builtin.sh $(wildcard btf/*/*.btf.xz)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)tools/gen-btf-builtin.sh $(ARCH) $@

$(OUT)/user/%.o: user/%.c $(USER_HDRS) $(BPF_HDRS) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(OUT)/mmscope: $(USER_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(USER_CFLAGS) -o $@ $^ $(LIBS)

# Debian's libmicrohttpd.a needs GnuTLS, p11-kit & co., which have no static libraries: the
# static build has no `serve` (it says so) rather than no build.
static: $(OUT)/mmscope-static
$(OUT)/static/cmd_serve.o: user/cmd/cmd_serve.c $(USER_HDRS) $(BPF_HDRS) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -DMMSCOPE_NO_SERVE -c $< -o $@
$(OUT)/mmscope-static: $(filter-out $(OUT)/user/cmd/cmd_serve.o,$(USER_OBJS)) $(OUT)/static/cmd_serve.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(USER_CFLAGS) -static -o $@ $^ $(STATIC_LIBS)

workloads: $(WORKLOADS)
$(OUT)/workloads/%: tools/workloads/%.c $(wildcard tools/workloads/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g $(FP_FLAGS) $(WARN) -std=gnu11 -pthread $(WORKLOAD_LDFLAGS) -o $@ $<

# deep_stack is the unwinding test's program (tests/live/test_unwind.sh): built without frame
# pointers, like a distribution's programs, so that only call-frame information gets through
# its stacks. deep_stack has it in .eh_frame (with .eh_frame_hdr); deep_stack_dbgframe, built
# without unwind tables but with -g, has its own functions' CFI only in .debug_frame.
NOFP_FLAGS := -O2 -fomit-frame-pointer $(WARN) -std=gnu11 -pthread $(WORKLOAD_LDFLAGS)
$(OUT)/workloads/deep_stack: tools/workloads/deep_stack.c $(wildcard tools/workloads/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(NOFP_FLAGS) -g -o $@ $<
$(OUT)/workloads/deep_stack_dbgframe: tools/workloads/deep_stack.c $(wildcard tools/workloads/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(NOFP_FLAGS) -g -fno-asynchronous-unwind-tables -fno-unwind-tables -o $@ $<

# page_touch as a 32-bit static program, for the VM tests of the user stacks of 32-bit threads
# on 64-bit kernels, whose frames differ (tests/vm/guest.sh): i386 for x86, and for arm64 armhf
# in ARM mode with APCS frames, the layout the arm64 kernel's compat unwinder reads
# (compat_user_backtrace()). Debian's cross compilers (tools/vm/deps.sh), not gcc-multilib,
# which conflicts with the ppc64el and arm64 ones. This host's kernel runs no 32-bit program;
# Debian's kernels do.
ifeq ($(ARCH),arm64)
CC32 ?= arm-linux-gnueabihf-gcc
CC32_FLAGS := -marm -mapcs-frame -fno-omit-frame-pointer
else
CC32 ?= i686-linux-gnu-gcc
CC32_FLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
endif
workloads32: $(OUT)/workloads/page_touch32
$(OUT)/workloads/page_touch32: tools/workloads/page_touch.c $(wildcard tools/workloads/*.h)
	$(call msg,CC32,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC32) $(CC32_FLAGS) -static -O2 -g $(WARN) -std=gnu11 -pthread -o $@ $<

# ---- tests: unit tests under AddressSanitizer + UBSan, linked against the user modules ----
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_OBJS := $(patsubst user/%.c,$(OUT)/asan/user/%.o,$(filter-out user/cmd/main.c,$(USER_SRCS)))
UNIT_TESTS := $(patsubst tests/unit/%.c,$(OUT)/unit/%,$(wildcard tests/unit/test_*.c))
# Test code the unit tests and the fuzzers share (oracles, checks): one copy, in tests/common.
TEST_COMMON_SRCS := $(wildcard tests/common/*.c)
TEST_COMMON_HDRS := $(wildcard tests/common/*.h)

$(OUT)/asan/user/%.o: user/%.c $(USER_HDRS) $(BPF_HDRS) $(SKELS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS:-O2=-O1) $(SAN) -c $< -o $@

$(OUT)/asan/libmmscope.a: $(ASAN_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/unit/%: tests/unit/%.c tests/unit/test.h $(TEST_COMMON_SRCS) $(TEST_COMMON_HDRS) $(OUT)/asan/libmmscope.a
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS:-O2=-O1) $(SAN) -Itests/unit -Itests/common -o $@ $< $(TEST_COMMON_SRCS) \
		$(OUT)/asan/libmmscope.a $(LIBS)

unit: $(UNIT_TESTS)

# mmscope itself under ASan/UBSan, for the live test that runs every subcommand with it
# (tests/live/test_sanitizers.sh).
$(OUT)/asan/mmscope: user/cmd/main.c $(OUT)/asan/libmmscope.a
	$(call msg,LD-SAN,$@)
	$(Q)$(CC) $(USER_CFLAGS:-O2=-O1) $(SAN) -o $@ $< $(OUT)/asan/libmmscope.a $(LIBS)
asan: $(OUT)/asan/mmscope

test: deps
	$(Q)$(MAKE) --no-print-directory all unit asan fuzz-build
	$(Q)tests/run.sh

# The suite RUNS times in a row with stress-ng loading every CPU alongside (tests/loaded.sh).
RUNS ?= 3
test-loaded: deps
	$(Q)$(MAKE) --no-print-directory all unit asan fuzz-build
	$(Q)tests/loaded.sh $(RUNS) $(SUITES)

run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(OUT)/mmscope stat -- $(OUT)/workloads/exec_loop 1000

bench-smoke: all
	$(Q)tools/bench-smoke.sh

# The benchmark: what watching costs, against perf and bpftrace (not part of make test).
bench: deps
	$(Q)$(MAKE) --no-print-directory all bench-tools
	$(Q)tools/bench/run.sh

# The profile pass's measurement floor: empty programs on mmscope's hooks (tools/bench/floor.c).
# Built beside, not in, build/bench: each run of the benchmark empties that.
bench-tools: $(OUT)/bench-tools/floor $(OUT)/bench-tools/floor.bpf.o
$(OUT)/bench-tools/floor.bpf.o: tools/bench/floor.bpf.c vmlinux-headers/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(OUT)/bench-tools/floor: tools/bench/floor.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -o $@ $< $(LIBS)

# cppcheck, clang-tidy (the checks in .clang-tidy) and valgrind on each subcommand.
static-checks: all
	$(Q)tools/static-checks.sh

# ---- fuzzing (clang libFuzzer) ----
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_USER := $(filter-out user/cmd/main.c,$(USER_SRCS))
$(OUT)/fuzz/%: tests/fuzz/%.c $(FUZZ_USER) $(USER_HDRS) $(TEST_COMMON_SRCS) $(TEST_COMMON_HDRS) $(SKELS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -DMMSCOPE_VERSION='"$(VERSION)"' -I$(OUT) -I. -Iuser -Ibpf \
		-Itests/common -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_USER) $(TEST_COMMON_SRCS) $(LIBS)
fuzz-build: $(FUZZERS)
fuzz: $(FUZZERS)
	$(Q)FUZZ_SECONDS=$${FUZZ_SECONDS:-300} tests/fuzz/run.sh $(OUT)/fuzz

FORMAT_FILES = $(USER_SRCS) $(USER_HDRS) bpf/*.c bpf/*.h tools/workloads/*.c tools/workloads/*.h \
	tools/bench/*.c \
	tests/unit/*.c tests/fuzz/*.c tests/common/*.c tests/common/*.h
format:
	clang-format -i $(FORMAT_FILES)

print-format-files:
	@echo $(FORMAT_FILES)

check-format:
	clang-format --dry-run -Werror $(FORMAT_FILES)

# The binary and its man pages (docs/man/*.8), under DESTDIR (for packaging) and PREFIX.
PREFIX ?= /usr/local
DESTDIR ?=
MANPAGES := $(wildcard docs/man/*.8)
.PHONY: install
install: $(OUT)/mmscope
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 $(OUT)/mmscope $(DESTDIR)$(PREFIX)/sbin/mmscope
	install -m 0644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man8/

clean:
	rm -rf build

# ---- VM tests: mmscope on Debian's 5.10, 6.1 and 6.12 kernels under QEMU (tests/vm/run.sh) ----
# make vmtest [TARGET="x86_64 arm64-6.12 ..."]   (root; default: every target of tests/vm/run.sh)
.PHONY: vmtest
vmtest:
	tests/vm/run.sh $(TARGET)
