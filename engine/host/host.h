/* host.h: what the cqlua host offers scripts through ffi.C besides PNG files: interruption by SIGINT / SIGTERM.
 * Preprocessed into the FFI declarations like cq.h: no includes, no function bodies.
 *
 * The first SIGINT or SIGTERM sets the interrupt flag to the signal number. The engine polls the flag at every
 * substep boundary (cq_set_interrupt_flag) and returns CQ_ERR_INTERRUPTED, so a long step stops within a substep.
 * By default the script then stops with an error at the next Lua instruction (as lua.c does for Ctrl-C); in
 * graceful mode (cq.train turns it on) the script keeps running and polls cqh_interrupted() at its own
 * boundaries, e.g. to save its state. A second signal kills the process at once. When the script ends after an
 * interruption the host exits with status 128 + the signal number. */
#ifndef CQH_HOST_H
#define CQH_HOST_H
const volatile int* cqh_interrupt_flag(void); /* the flag to hand to cq_set_interrupt_flag */
int cqh_interrupted(void);                    /* 0, or the number of the signal that interrupted the run */
void cqh_clear_interrupt(void);               /* forgets an interruption (tests, or a script that handled it) */
int cqh_graceful(int on);                     /* 1: no error at the next instruction; returns the old setting */
#endif
