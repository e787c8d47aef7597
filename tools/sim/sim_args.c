/* sim_args.c - argument helpers of the paddock-sim subcommands (tools/sim/sim_args.h). */
#include "tools/sim/sim_args.h"

#include <stdlib.h>

int sim_args_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo) || !(v <= hi))
        return -1;
    *out = v;
    return 0;
}
