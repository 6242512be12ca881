// The heap allocation counter of the benchmarks and of the count guards (docs/benchmarks.md, Counters): a library
// preloaded into a process (LD_PRELOAD) that defines glibc's allocation functions, counts each call and forwards it to
// glibc's own `__libc_malloc` family. Never linked into the product: scripts/alloc-counter/build.sh, the benchmark
// scripts and the tests' support code build it on the fly with gcc into .build or a temporary directory.
//
// No dlsym(RTLD_NEXT): dlsym itself allocates, and a shim that looks its malloc up that way spun for ever in
// `roadsave replay` here. The `__libc_*` entry points need no look-up.
//
// What it gives:
// - `roadsave_allocations()`: blocks obtained so far by the whole process (malloc, calloc, realloc, the aligned
//   family); `roadsave_thread_allocations()` the same for the calling thread only, so that a process can count a
//   region of its own work while its other threads (ZeroMQ's, the runtime's) go on. `roadsave_frees()`,
//   `roadsave_allocated_bytes()` and `roadsave_reallocations()` beside them. A process reads them through
//   dlsym(RTLD_DEFAULT, "roadsave_allocations"): absent (nil) when the shim is not preloaded, and then it says so.
// - With ROADSAVE_ALLOC_COUNTER_FILE=PATH ("%p" in it becomes the pid), the counters live in that file, mapped
//   shared: another process (the benchmark) reads them while the counted one runs, before and after a flood. The
//   file is 64 bytes: eight little-endian uint64, the `Slot`s below in order.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

enum Slot { allocationsSlot, freesSlot, bytesSlot, reallocationsSlot, slotCount = 8 };

static _Atomic uint64_t inProcess[slotCount];
// Where the counters are: `inProcess` until the constructor maps the file (what came before is carried over).
static _Atomic uint64_t *counters = inProcess;
static __thread uint64_t threadAllocations __attribute__((tls_model("initial-exec")));

static inline void counted(size_t size) {
    atomic_fetch_add_explicit(&counters[allocationsSlot], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&counters[bytesSlot], size, memory_order_relaxed);
    threadAllocations += 1;
}

void *malloc(size_t size) {
    counted(size);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    counted(count * size);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    if (pointer == NULL) {
        counted(size);
    } else if (size == 0) {
        atomic_fetch_add_explicit(&counters[freesSlot], 1, memory_order_relaxed);
    } else {
        // A block that grows (or shrinks) is a new allocation as far as the work goes: glibc may copy it.
        counted(size);
        atomic_fetch_add_explicit(&counters[reallocationsSlot], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&counters[freesSlot], 1, memory_order_relaxed);
    }
    return __libc_realloc(pointer, size);
}

void free(void *pointer) {
    if (pointer == NULL) return;
    atomic_fetch_add_explicit(&counters[freesSlot], 1, memory_order_relaxed);
    __libc_free(pointer);
}

static int validAlignment(size_t alignment) {
    return alignment >= sizeof(void *) && (alignment & (alignment - 1)) == 0;
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (!validAlignment(alignment)) return EINVAL;
    counted(size);
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    counted(size);
    return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    counted(size);
    return __libc_memalign(alignment, size);
}

void *valloc(size_t size) {
    counted(size);
    return __libc_valloc(size);
}

void *pvalloc(size_t size) {
    counted(size);
    return __libc_pvalloc(size);
}

uint64_t roadsave_allocations(void) { return atomic_load_explicit(&counters[allocationsSlot], memory_order_relaxed); }
uint64_t roadsave_frees(void) { return atomic_load_explicit(&counters[freesSlot], memory_order_relaxed); }
uint64_t roadsave_allocated_bytes(void) { return atomic_load_explicit(&counters[bytesSlot], memory_order_relaxed); }
uint64_t roadsave_reallocations(void) {
    return atomic_load_explicit(&counters[reallocationsSlot], memory_order_relaxed);
}
uint64_t roadsave_thread_allocations(void) { return threadAllocations; }

// The file named by ROADSAVE_ALLOC_COUNTER_FILE, mapped, with what was counted before it.
__attribute__((constructor)) static void mapCounterFile(void) {
    const char *pattern = getenv("ROADSAVE_ALLOC_COUNTER_FILE");
    if (pattern == NULL || pattern[0] == 0) return;
    char path[4096];
    size_t length = 0;
    for (const char *c = pattern; *c && length + 24 < sizeof path; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            length += (size_t)snprintf(path + length, sizeof path - length, "%ld", (long)getpid());
            c++;
        } else {
            path[length++] = *c;
        }
    }
    path[length] = 0;
    int descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (descriptor < 0) return;
    size_t size = slotCount * sizeof(uint64_t);
    if (ftruncate(descriptor, (off_t)size) != 0) {
        close(descriptor);
        return;
    }
    void *mapped = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    close(descriptor);
    if (mapped == MAP_FAILED) return;
    _Atomic uint64_t *file = mapped;
    for (int slot = 0; slot < slotCount; slot++) {
        atomic_store_explicit(&file[slot], atomic_load_explicit(&inProcess[slot], memory_order_relaxed),
                              memory_order_relaxed);
    }
    counters = file;
}
