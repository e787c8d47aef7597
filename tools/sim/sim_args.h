/* sim_args.h - what the paddock-sim subcommands share to read their arguments. */
#ifndef PADDOCK_TOOLS_SIM_SIM_ARGS_H
#define PADDOCK_TOOLS_SIM_SIM_ARGS_H

/* Parses all of `s` as a number in [lo, hi] into *out: 0, or -1 (nothing written) for text
 * that is not a number, has trailing characters, is NaN or lies outside the range. */
int sim_args_num(const char *s, double lo, double hi, double *out);

#endif
