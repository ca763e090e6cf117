/*
 * cl_errors.h - names of OpenCL error codes.
 *
 * Owns: the code -> "CL_NAME" table used in error messages.
 */
#ifndef HB_CL_ERRORS_H
#define HB_CL_ERRORS_H

/* hb_cl_error_name: "CL_OUT_OF_RESOURCES" for -5; "CL_UNKNOWN_ERROR" for
 * codes not in the table. Static; never NULL. */
const char *hb_cl_error_name(int code);

#endif /* HB_CL_ERRORS_H */
