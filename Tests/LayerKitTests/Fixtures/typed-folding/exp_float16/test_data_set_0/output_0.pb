
ByJ˜>dGauM