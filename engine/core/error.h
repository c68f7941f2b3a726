/* The error sink every layer writes into: a message and, for blow-ups, where it happened. */
#ifndef CQ_ERROR_H
#define CQ_ERROR_H
#include "cq.h"

typedef struct cqi_err {
  char msg[1024];   /* the last error message ("" after a success) */
  cq_blowup blowup; /* the last blow-up (check CQ_CHECK_OK: none) */
} cqi_err;

/* Sets the message (printf-style) and returns status, so callers can write `return cqi_errorf(e, CQ_ERR_ARG, ...)`. */
int cqi_errorf(cqi_err* e, int status, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;
#endif
