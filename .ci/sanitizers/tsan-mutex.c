/* Tells ThreadSanitizer about the slow paths of Swift's Synchronization.Mutex on Linux.
 *
 * Mutex's fast paths are compare-and-swaps inlined into our (instrumented) code, so TSan sees them.
 * Under contention it calls _lockSlow/_unlockSlow in libswiftSynchronization.so, which is not
 * instrumented and hands the lock over in the kernel (FUTEX_LOCK_PI/FUTEX_UNLOCK_PI): TSan then sees
 * no happens-before edge between two owners and reports every contended critical section as a race.
 * .ci/sanitize preloads this library (LD_PRELOAD) into the sanitized processes: it interposes the
 * three slow-path symbols, calls the real ones, and adds the acquire/release TSan missed, on the
 * mutex word's address (the same address the inlined fast paths synchronize on). Any other race is
 * still reported. In a process without TSan the annotations are absent (weak) and it only forwards.
 *
 * The functions use Swift's calling convention: self (the _MutexHandle's address) arrives in the
 * swiftself register, which clang's swift_context parameter names. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

#define SWIFTCALL __attribute__((swiftcall))
#define SWIFTSELF __attribute__((swift_context))

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef SWIFTCALL void LockSlow(uint32_t, void *SWIFTSELF);
typedef SWIFTCALL bool TryLockSlow(void *SWIFTSELF);
typedef SWIFTCALL void UnlockSlow(void *SWIFTSELF);

static void *real(const char *symbol) {
    void *function = dlsym(RTLD_NEXT, symbol);
    if (function == NULL) abort(); /* only Swift code calls these, and it links the real library */
    return function;
}

SWIFTCALL void lock_slow(uint32_t self_id, void *SWIFTSELF handle) __asm__(LOCK_SLOW);
SWIFTCALL void lock_slow(uint32_t self_id, void *SWIFTSELF handle) {
    static LockSlow *function;
    if (function == NULL) function = (LockSlow *)real(LOCK_SLOW);
    function(self_id, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFTCALL bool try_lock_slow(void *SWIFTSELF handle) __asm__(TRY_LOCK_SLOW);
SWIFTCALL bool try_lock_slow(void *SWIFTSELF handle) {
    static TryLockSlow *function;
    if (function == NULL) function = (TryLockSlow *)real(TRY_LOCK_SLOW);
    bool locked = function(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}

SWIFTCALL void unlock_slow(void *SWIFTSELF handle) __asm__(UNLOCK_SLOW);
SWIFTCALL void unlock_slow(void *SWIFTSELF handle) {
    static UnlockSlow *function;
    if (function == NULL) function = (UnlockSlow *)real(UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(handle);
    function(handle);
}
