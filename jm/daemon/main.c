/* paddock-jm: the job manager of one job (jm/daemon/jmd_main.c has its command line). */
#include "jm/daemon/jmd_main.h"

int main(int argc, char **argv)
{
    return jmd_main(argc, argv);
}
