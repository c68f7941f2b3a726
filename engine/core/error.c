/* The error sink (error.h). */
#include <stdarg.h>
#include <stdio.h>
#include "error.h"

int cqi_errorf(cqi_err* e, int status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return status;
}
