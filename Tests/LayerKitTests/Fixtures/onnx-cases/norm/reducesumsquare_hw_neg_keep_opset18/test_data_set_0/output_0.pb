ByJ0iÁAœ~òA1…–A0RB„ÀA}eAá¾·A
§×AC¯B¥·Aê—Bê‹jA