// AXI4 read master for weight rows (docs/engine.md, "Sequential stages"): each request (byte
// address, beats) becomes INCR bursts that never cross a 4 KB boundary or exceed 256 beats. The
// first burst of a request is sized one stage ahead, so requests of one burst go out back to
// back; a request that needs more bursts sizes each next one in two cycles of its own (the room
// left in its page, then the burst: one cycle took 7 LUT levels on a 64-bit port). Whether a
// burst is its request's last is registered with it, so taking the next request waits on no
// comparison. Reads stay in order (one ID); at most MAX_BURSTS are in flight. Read data goes
// straight to the consumer.
module fg_axi_reader #(
    parameter integer DATA_W = 32,
    parameter integer LEN_W = 16,
    parameter integer MAX_BURSTS = 16
) (
    input  wire             clk,
    input  wire             rst,
    input  wire [63:0]      req_addr,
    input  wire [LEN_W-1:0] req_beats,
    input  wire             req_valid,
    output wire             req_pop,
    output wire [63:0]      araddr,
    output wire [7:0]       arlen,
    output wire [2:0]       arsize,
    output wire             arvalid,
    input  wire             arready,
    input  wire             rvalid,
    input  wire             rlast,
    input  wire             rready,
    output wire             idle            // nothing requested, sized or in flight
);
    localparam integer BEAT_BYTES = DATA_W / 8;
    localparam integer SIZE = $clog2(BEAT_BYTES);
    localparam integer FW = $clog2(MAX_BURSTS + 1);
    localparam [31:0] MAX32 = MAX_BURSTS;
    localparam [31:0] SIZE32 = SIZE;
    localparam integer BURST_W = 9;  // 1..256 beats
    localparam integer LW = (LEN_W > BURST_W) ? LEN_W : BURST_W;  // beats left of a request

    // Beats from `address` to the end of its 4 KB page: a burst may not cross it.
    /* verilator lint_off UNUSEDSIGNAL */
    function automatic [12:0] page_beats(input [63:0] address);
        page_beats = (13'd4096 - {1'b0, address[11:0]}) >> SIZE;
    endfunction
    /* verilator lint_on UNUSEDSIGNAL */

    // A burst of at most `beats`, 256 and the `room` left in its page.
    function automatic [BURST_W-1:0] sized(input [12:0] room_left, input [LW-1:0] beats);
        reg [31:0] wanted;
        begin
            wanted = {{(32 - LW){1'b0}}, beats};
            if (wanted > {19'd0, room_left}) wanted = {19'd0, room_left};
            if (wanted > 32'd256) wanted = 32'd256;
            sized = wanted[BURST_W-1:0];
        end
    endfunction

    // The first burst of a beats-long read at `address`: at most 256 beats, not across 4 KB.
    function automatic [BURST_W-1:0] first_burst(input [63:0] address, input [LW-1:0] beats);
        first_burst = sized(page_beats(address), beats);
    endfunction

    // A: the request at the head, its first burst sized
    reg a_valid;
    reg [63:0] a_addr;
    reg [LW-1:0] a_left;
    reg [BURST_W-1:0] a_len;
    // B: the burst on the AR channel (or, with `resize`, the rest of a request being sized)
    reg b_valid, resize, b_last;            // b_last: the burst is its request's last
    reg measured;                           // resizing: `room` holds the beats left in b_addr's page
    reg [12:0] room;
    reg [63:0] b_addr;
    reg [LW-1:0] b_left;
    reg [BURST_W-1:0] b_len;
    always @(posedge clk) measured <= resize && !measured;  // the first cycle of a resize measures
    // b_addr is still in a resize's first cycle, so `room` is its page's in the second
    always @(posedge clk) room <= page_beats(b_addr);
    reg [FW-1:0] inflight;
    reg can_issue;                          // fewer than MAX_BURSTS - 1 in flight, registered

    wire ar_fire = arvalid && arready;
    wire r_end = rvalid && rready && rlast;
    wire [LW-1:0] req_left;
    fg_resize #(.IN_W(LEN_W), .OUT_W(LW), .SIGNED(0)) u_left (.in(req_beats), .out(req_left));
    wire b_free = !b_valid || (ar_fire && b_last);
    wire a_move = a_valid && b_free;
    assign req_pop = req_valid && (!a_valid || a_move);

    assign arvalid = b_valid && !resize && can_issue;
    assign araddr = b_addr;
    assign arlen = b_len[7:0] - 8'd1;
    assign arsize = SIZE32[2:0];
    assign idle = !req_valid && !a_valid && !b_valid && inflight == {FW{1'b0}};

    always @(posedge clk) begin
        if (rst) begin
            a_valid <= 1'b0;
            b_valid <= 1'b0;
            resize <= 1'b0;
            inflight <= {FW{1'b0}};
            can_issue <= 1'b0;
        end else begin
            if (req_pop) a_valid <= 1'b1;
            else if (a_move) a_valid <= 1'b0;
            if (a_move) begin
                b_valid <= 1'b1;
                resize <= 1'b0;
            end else if (ar_fire && b_last) begin
                b_valid <= 1'b0;
            end else if (ar_fire) begin
                resize <= 1'b1;
            end else if (resize && measured) begin
                resize <= 1'b0;
            end
            if (ar_fire && !r_end) inflight <= inflight + 1'b1;
            else if (r_end && !ar_fire) inflight <= inflight - 1'b1;
            can_issue <= inflight < MAX32[FW-1:0] - 1'b1;
        end
        if (req_pop) begin
            a_addr <= req_addr;
            a_left <= req_left;
            a_len <= first_burst(req_addr, req_left);
        end
        if (a_move) begin
            b_addr <= a_addr;
            b_left <= a_left;
            b_len <= a_len;
            b_last <= a_left == {{(LW-BURST_W){1'b0}}, a_len};
        end else if (ar_fire) begin
            b_addr <= b_addr + ({55'd0, b_len} << SIZE);
            b_left <= b_left - {{(LW-BURST_W){1'b0}}, b_len};
        end else if (resize && measured) begin
            b_len <= sized(room, b_left);
            b_last <= {{(32 - LW){1'b0}}, b_left} <= {19'd0, room} && b_left <= 256;
        end
    end
endmodule
