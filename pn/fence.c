#include "pn/fence.h"

#include "common/err.h"

int fence_check(uint32_t seen, uint32_t epoch)
{
    return epoch == 0 || epoch >= seen ? 0 : ERR_FENCED;
}

int fence_admit(uint32_t *seen, uint32_t epoch)
{
    int rc = fence_check(*seen, epoch);
    if (rc)
        return rc;
    if (epoch > *seen) {
        *seen = epoch;
        return 1;
    }
    return 0;
}
