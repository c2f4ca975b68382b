#pragma once
#include <libavcodec/avcodec.h>
