// The load phase of the dataflow stages whose weights are in UltraRAM (docs/engine.md, "Dataflow
// weights in UltraRAM"), which the bitstream cannot initialize: at a batch's start it reads the
// load image, BEATS beats from `base`, and hands each beat, registered, to the first stage of the
// load chain. Each loaded stage keeps as many beats as it has weight rows and passes the rest on,
// registered, so no signal fans out to more than one stage. The chain takes a beat every cycle,
// so the read data is always accepted (RREADY high).
//
// The image starts on a 4 KB page (XRT's buffers do; the testbench's images too), so bursts of
// BURST beats, a divisor of a page, never cross one: their addresses and lengths need no page
// arithmetic, which a general AXI reader (fg_axi_reader.v) does in 7 LUT levels on a long request.
// At most MAX_BURSTS are in flight.
module fg_loader #(
    parameter integer DATA_W = 32,
    parameter integer BEATS = 1,
    parameter integer MAX_BURSTS = 16
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              start,         // a batch starts
    input  wire [63:0]       base,          // the image's byte address, 4 KB aligned
    output wire [63:0]       araddr,
    output wire [7:0]        arlen,
    output wire [2:0]        arsize,
    output wire              arvalid,
    input  wire              arready,
    input  wire [DATA_W-1:0] rdata,
    input  wire              rvalid,
    input  wire              rlast,
    output wire              rready,
    output reg  [DATA_W-1:0] data,
    output reg               valid
);
    localparam integer BEAT_BYTES = DATA_W / 8;
    localparam integer SIZE = $clog2(BEAT_BYTES);
    localparam integer PAGE_BEATS = 4096 / BEAT_BYTES;
    localparam integer BURST = (PAGE_BEATS < 256) ? PAGE_BEATS : 256;
    localparam integer BURSTS = (BEATS + BURST - 1) / BURST;
    localparam integer LAST = BEATS - (BURSTS - 1) * BURST;  // beats of the last burst
    localparam integer BW = (BURSTS > 2) ? $clog2(BURSTS + 1) : 2;
    localparam integer FW = $clog2(MAX_BURSTS + 1);
    localparam [31:0] BURSTS32 = BURSTS;
    localparam [BW-1:0] TWO = 2;
    localparam [31:0] BURST_LEN32 = BURST - 1;
    localparam [31:0] LAST_LEN32 = LAST - 1;
    localparam [31:0] SIZE32 = SIZE;
    localparam [31:0] MAX32 = MAX_BURSTS;
    localparam [63:0] STEP = BURST * BEAT_BYTES;

    reg asking;                         // bursts are left to ask for
    reg last_one;                       // the next burst is the image's last
    reg [BW-1:0] left;                  // bursts left to ask for
    reg [63:0] address;
    reg [FW-1:0] inflight;
    reg can_issue;                      // fewer than MAX_BURSTS - 1 in flight, registered
    wire ar_fire = arvalid && arready;
    wire r_end = rvalid && rlast;

    assign arvalid = asking && can_issue;
    assign araddr = address;
    assign arlen = last_one ? LAST_LEN32[7:0] : BURST_LEN32[7:0];
    assign arsize = SIZE32[2:0];
    assign rready = 1'b1;

    always @(posedge clk) begin
        if (rst) begin
            asking <= 1'b0;
            inflight <= {FW{1'b0}};
            can_issue <= 1'b0;
            valid <= 1'b0;
        end else begin
            if (start) begin
                asking <= 1'b1;
                last_one <= BURSTS == 1;
                left <= BURSTS32[BW-1:0];
                address <= base;
            end else if (ar_fire) begin
                asking <= !last_one;
                last_one <= left == TWO;
                left <= left - 1'b1;
                address <= address + STEP;
            end
            if (ar_fire && !r_end) inflight <= inflight + 1'b1;
            else if (r_end && !ar_fire) inflight <= inflight - 1'b1;
            can_issue <= inflight < MAX32[FW-1:0] - 1'b1;
            valid <= rvalid;
        end
        data <= rdata;
    end
endmodule
